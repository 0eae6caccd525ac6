import { gql, type TypedDocumentNode } from "@apollo/client";
import { useFragment, useMutation } from "@apollo/client/react";
import { useEffect } from "react";

import { useViewer } from "../session/ViewerContext";
import { countOf } from "../ui/plural";
import { isFirstVisit, noteVisit } from "./firstVisit";

const NEW_FANS_FRAGMENT: TypedDocumentNode<{ newFansCount: number | null; fansCount: number }> = gql`
  fragment NewFansBadge_user on User {
    newFansCount
    fansCount
  }
`;

const MARK_FANS_SEEN: TypedDocumentNode<{
  markFansSeen: {
    __typename: "MarkFansSeenPayload";
    seenAt: string;
    viewer: { __typename: "User"; id: string; newFansCount: number | null };
  };
}> = gql`
  mutation MarkFansSeen {
    markFansSeen {
      seenAt
      viewer {
        id
        newFansCount
      }
    }
  }
`;

function useNewFans() {
  const viewer = useViewer();
  const { data } = useFragment({ fragment: NEW_FANS_FRAGMENT, from: { __typename: "User", id: viewer.id } });
  const [markSeen] = useMutation(MARK_FANS_SEEN, {
    optimisticResponse: {
      markFansSeen: {
        __typename: "MarkFansSeenPayload",
        seenAt: new Date().toISOString(),
        viewer: { __typename: "User", id: viewer.id, newFansCount: 0 },
      },
    },
  });
  const newFans = data?.newFansCount ?? null;
  const fans = data?.fansCount ?? null;
  const first = newFans !== null && fans !== null && isFirstVisit(viewer.userId, newFans, fans);
  return { viewer, count: first ? 0 : (newFans ?? 0), first, markSeen };
}

/**
 * "12 new" by the viewer's name in the top bar, read live from the cache: the fans who came since
 * the viewer last marked their fans seen. Shown once, there; the fans tab has the button.
 *
 * A first visit shows no count. The server counts every fan as new until the first markFansSeen,
 * so "291 new" would only say how many fans there are; instead the first visit (in this browser,
 * while every fan still counts as new) sets the mark, and from then on the badge counts arrivals.
 */
export function NewFansBadge() {
  const { viewer, count, first, markSeen } = useNewFans();
  useEffect(() => {
    if (first) void markSeen().then(() => noteVisit(viewer.userId));
    else if (count > 0) noteVisit(viewer.userId);
  }, [first, count, markSeen, viewer.userId]);
  if (count <= 0) return null;
  return (
    <span className="badge badge-new" data-new-fans={count} title={countOf(count, "new fan")}>
      {count.toLocaleString()} new
    </span>
  );
}

/** On the viewer's fans tab: clears the count (markFansSeen). Nothing when there is none. */
export function MarkFansSeenButton() {
  const { count, markSeen, viewer } = useNewFans();
  if (count <= 0) return null;
  return (
    <div className="tab-tools">
      <button
        type="button"
        className="button button-link"
        data-action="mark-fans-seen"
        onClick={() => void markSeen().then(() => noteVisit(viewer.userId))}
      >
        Mark new fans as seen
      </button>
    </div>
  );
}

export { NEW_FANS_FRAGMENT };
