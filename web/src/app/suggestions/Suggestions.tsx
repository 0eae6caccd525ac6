import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";
import { useLayoutEffect } from "react";

import { apiProblem } from "../apollo/errors";
import { FollowButton } from "../follow/FollowButton";
import { FOLLOW_TARGET_FRAGMENT, type FollowTarget } from "../follow/useFollow";
import { Avatar } from "../ui/Avatar";
import { profileHash, restoreScroll } from "../route";
import { ErrorNotice } from "../ui/ErrorNotice";
import { countOf } from "../ui/plural";
import { RowSkeletons } from "../ui/Skeleton";

interface Suggestion {
  followedByCount: number;
  followedBy: { id: string; userId: string; name: string | null }[];
  user: FollowTarget & { name: string | null; avatarUrl: string | null };
}

// Not a connection: the API answers the best few, ranked, in one list. A follow evicts the field
// (follow/cacheUpdates.ts), so the list is fetched again without the user just followed.
const SUGGESTIONS: TypedDocumentNode<{ viewer: { id: string; suggestions: Suggestion[] | null } | null }> = gql`
  query Suggestions {
    viewer {
      id
      suggestions(first: 10) {
        followedByCount
        followedBy(first: 2) {
          id
          userId
          name
        }
        user {
          name
          avatarUrl
          ...FollowButton_user
        }
      }
    }
  }
  ${FOLLOW_TARGET_FRAGMENT}
`;

function reason({ followedBy, followedByCount }: Suggestion): string {
  const names = followedBy.map((user) => user.name ?? `@${user.userId}`);
  const others = followedByCount - names.length;
  return `Followed by ${names.join(", ")}${others > 0 ? ` and ${others.toLocaleString()} more you follow` : ""}`;
}

/** People the viewer may know, with who of the people they follow follows them. */
export default function Suggestions({ onOpen }: { onOpen: (userId: string) => void }) {
  const { data, error, refetch } = useQuery(SUGGESTIONS);
  const ready = data !== undefined;
  useLayoutEffect(() => restoreScroll(ready), [ready]);
  if (error) return <ErrorNotice problem={apiProblem(error)} onRetry={() => refetch()} />;
  if (!data) return <RowSkeletons />;
  const suggestions = data.viewer?.suggestions ?? [];
  if (suggestions.length === 0) return <p className="list-end muted">No suggestions yet: follow a few people first.</p>;
  return (
    <div className="follow-list" data-list="suggestions">
      <ul>
        {suggestions.map((suggestion) => {
          const { user } = suggestion;
          return (
            <li key={user.id} className="user-row" data-user-id={user.userId}>
              <Avatar userId={user.userId} name={user.name} url={user.avatarUrl} />
              <div className="user-row-text">
                <a
                  href={profileHash(user.userId)}
                  className="user-name"
                  onClick={(event) => {
                    if (event.metaKey || event.ctrlKey || event.shiftKey) return;
                    event.preventDefault();
                    onOpen(user.userId);
                  }}
                >
                  {user.name ?? `User ${user.userId}`}
                </a>
                <div className="muted">
                  @{user.userId} · {countOf(user.fansCount, "fan")} · {reason(suggestion)}
                </div>
              </div>
              <span className="row-actions">
                <FollowButton user={user} />
              </span>
            </li>
          );
        })}
      </ul>
    </div>
  );
}
