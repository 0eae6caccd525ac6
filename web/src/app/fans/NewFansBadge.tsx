import { gql, type TypedDocumentNode } from "@apollo/client";
import { useFragment, useMutation } from "@apollo/client/react";

import { useViewer } from "../session/ViewerContext";
import { countOf } from "../ui/plural";

const NEW_FANS_FRAGMENT: TypedDocumentNode<{ newFansCount: number | null }> = gql`
  fragment NewFansBadge_user on User {
    newFansCount
  }
`;

const MARK_FANS_SEEN: TypedDocumentNode<{
  markFansSeen: { __typename: "MarkFansSeenPayload"; seenAt: string; viewer: { __typename: "User"; id: string; newFansCount: number | null } };
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

/** "12 new" next to the viewer's fans, read live from the cache; `markFansSeen` clears it. */
export function NewFansBadge({ withButton = false }: { withButton?: boolean }) {
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
  const count = data?.newFansCount ?? 0;
  if (count <= 0) return null;
  return (
    <span className="new-fans">
      <span className="badge badge-new" data-new-fans={count} title={countOf(count, "new fan")}>
        {count.toLocaleString()} new
      </span>
      {withButton && (
        <button type="button" className="button button-link" onClick={() => void markSeen()}>
          Mark as seen
        </button>
      )}
    </span>
  );
}

export { NEW_FANS_FRAGMENT };
