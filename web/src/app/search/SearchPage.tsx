import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";
import { useDeferredValue, useLayoutEffect, useState } from "react";

import { apiProblem } from "../apollo/errors";
import { UserRow } from "../lists/UserRow";
import { restoreScroll } from "../route";
import { ErrorNotice } from "../ui/ErrorNotice";
import { RowSkeletons } from "../ui/Skeleton";
import { useDocumentTitle } from "../ui/useDocumentTitle";
import { SEARCH_EDGE_FRAGMENT, type SearchEdge } from "./results";

// A page of people; more come a page at a time, on "Show more".
const PAGE_SIZE = 20;

const SEARCH_PAGE: TypedDocumentNode<
  { searchUsers: { edges: SearchEdge[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } },
  { query: string; first: number; after?: string | null }
> = gql`
  query SearchPage($query: String!, $first: Int!, $after: String) {
    searchUsers(query: $query, first: $first, after: $after) {
      edges {
        ...SearchResult_edge
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
  ${SEARCH_EDGE_FRAGMENT}
`;

/**
 * Everyone a search finds (#/search/<words>), as the box in the top bar shows the first few: the
 * viewer's follows first, then by fans, each with their relationship and a Follow button.
 */
export function SearchPage({ query, onOpen }: { query: string; onOpen: (userId: string) => void }) {
  useDocumentTitle(query ? `People matching “${query}”` : "Search people");
  const { data, error, loading, fetchMore, refetch } = useQuery(SEARCH_PAGE, {
    variables: { query, first: PAGE_SIZE },
    skip: query === "",
    notifyOnNetworkStatusChange: true,
  });
  // Drawn in the background, as a list's rows are (lists/FollowList.tsx).
  const found = useDeferredValue(data?.searchUsers);
  const [pageError, setPageError] = useState<unknown>(null);
  useLayoutEffect(() => restoreScroll(found !== undefined), [found]);

  function more() {
    setPageError(null);
    fetchMore({ variables: { after: found?.pageInfo.endCursor } }).catch((caught: unknown) => setPageError(caught));
  }

  return (
    <section className="profile search-page" aria-labelledby="search-title">
      <div className="settings-head">
        <h1 id="search-title">{query ? `People matching “${query}”` : "Search people"}</h1>
      </div>
      {query === "" ? (
        <p className="list-end muted">Type a name, or the start of one, or a user id in the search box.</p>
      ) : error && !found ? (
        <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />
      ) : !found ? (
        <RowSkeletons />
      ) : (
        <div className="follow-list" data-list="search">
          {found.edges.length === 0 ? (
            <p className="list-end muted">No one matches “{query}”.</p>
          ) : (
            <ul>
              {found.edges.map((edge) => (
                <UserRow key={edge.node.id} edge={edge} onOpen={onOpen} />
              ))}
            </ul>
          )}
          {pageError != null && <ErrorNotice problem={apiProblem(pageError)} onRetry={more} />}
          {found.pageInfo.hasNextPage && pageError == null && (
            <p className="list-end">
              <button type="button" className="button button-secondary" disabled={loading} onClick={more}>
                {loading ? "Loading…" : "Show more people"}
              </button>
            </p>
          )}
        </div>
      )}
    </section>
  );
}
