import { useApolloClient, useQuery } from "@apollo/client/react";
import { useCallback, useDeferredValue, useEffect, useLayoutEffect, useRef, useState } from "react";

import { apiProblem } from "../apollo/errors";
import { restoreScroll } from "../route";
import { useViewer } from "../session/ViewerContext";
import { ErrorNotice } from "../ui/ErrorNotice";
import { countOf } from "../ui/plural";
import { RowSkeletons } from "../ui/Skeleton";
import { showList } from "./shown";
import { type Connection, type ListTab, PAGE_SIZE } from "./tabs";
import { UserRow } from "./UserRow";

/** One list of a user's, paged on its cursors as the reader scrolls to the end. */
export function FollowList({
  tab,
  userId,
  onOpen,
}: {
  tab: ListTab;
  userId: string;
  onOpen: (userId: string) => void;
}) {
  const client = useApolloClient();
  const viewer = useViewer();
  const own = userId === viewer.userId;
  const { data, error, loading, fetchMore, refetch } = useQuery(tab.query, {
    variables: { userId, first: PAGE_SIZE },
    notifyOnNetworkStatusChange: true,
  });
  // The rows are drawn in the background (a transition, which React cuts into 5 ms slices), not
  // in one task after the answer: a page of 20 rows held a phone's main thread for a quarter second.
  const connection = useDeferredValue(data?.user?.[tab.field] as Connection | null | undefined);
  const sentinel = useRef<HTMLDivElement>(null);
  const hasNextPage = connection?.pageInfo.hasNextPage ?? false;
  const endCursor = connection?.pageInfo.endCursor ?? null;
  // A next page that failed: not the query's error (fetchMore rejects), shown below the list with a Retry.
  const [pageError, setPageError] = useState<unknown>(null);

  // The viewer's own lists keep their entries while shown (lists/shown.ts).
  useEffect(() => {
    if (!own) return;
    const viewerRef = client.cache.identify({ __typename: "User", id: viewer.id });
    return viewerRef ? showList(client.cache, viewerRef, tab.field) : undefined;
  }, [own, client, viewer.id, tab.field]);

  // Back to this list: where it was scrolled, once its cached pages are drawn.
  const ready = connection !== undefined;
  useLayoutEffect(() => restoreScroll(ready), [ready]);

  // relayStylePagination appends the next page to the cached list; the query re-renders with it.
  const loadMore = useCallback(() => {
    setPageError(null);
    return fetchMore({ variables: { after: endCursor } }).catch((caught: unknown) => setPageError(caught));
  }, [fetchMore, endCursor]);

  useEffect(() => {
    const element = sentinel.current;
    // After a failure, only the Retry loads on (the sentinel would still be in view).
    if (!element || !hasNextPage || loading || pageError) return;
    const observer = new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) {
        observer.disconnect();
        void loadMore();
      }
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [hasNextPage, loading, pageError, loadMore]);

  if (error && !connection) return <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />;
  if (connection === undefined) return <RowSkeletons />;
  // The viewer-only lists are null on anyone else's profile.
  if (connection === null) return <p className="list-end muted">Only the user sees this list.</p>;
  if (connection.hidden) {
    return (
      <p className="list-end muted" data-hidden-list={tab.key}>
        {countOf(connection.totalCount, "user")}, not shown to you.
      </p>
    );
  }
  return (
    <div className="follow-list" data-list={tab.key}>
      {connection.edges.length === 0 ? (
        <p className="list-end muted">{tab.empty}</p>
      ) : (
        <ul>
          {connection.edges.map((edge) => (
            <UserRow
              key={edge.cursor}
              edge={edge}
              controls={tab.controls}
              own={own}
              field={tab.field}
              since={tab.since}
              onOpen={onOpen}
            />
          ))}
        </ul>
      )}
      {loading && hasNextPage && <RowSkeletons count={2} />}
      <div ref={sentinel} className="list-end muted">
        {loading
          ? "Loading…"
          : hasNextPage
            ? `${connection.edges.length.toLocaleString()} of ${connection.totalCount.toLocaleString()}`
            : connection.edges.length > 0 && `All ${connection.edges.length.toLocaleString()} shown`}
      </div>
      {pageError != null && <ErrorNotice problem={apiProblem(pageError)} onRetry={loadMore} />}
      {error && <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />}
    </div>
  );
}
