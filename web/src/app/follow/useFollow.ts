import { gql, type TypedDocumentNode } from "@apollo/client";
import { useApolloClient, useMutation } from "@apollo/client/react";
import { useState } from "react";

import { apiProblem, type UserError, userErrorText } from "../apollo/errors";
import { useViewer } from "../session/ViewerContext";
import { type FollowAction, followsViewer, nextRelationship, type Relationship, viewerFollows } from "./relationship";

/** What a follow button needs of the user it stands for. */
export interface FollowTarget {
  __typename?: "User";
  id: string;
  userId: string;
  relationship: Relationship;
  fansCount: number;
}

export const FOLLOW_TARGET_FRAGMENT = gql`
  fragment FollowButton_user on User {
    id
    userId
    relationship
    fansCount
  }
`;

// The payload returns every field the mutation can change, so the normalized cache updates the
// user and the viewer wherever they are shown, and edges follow their node (see apollo/cache.ts).
const PAYLOAD_FIELDS = `
  changed
  relationship
  user { id relationship viewerIsFollowing isFollowingViewer viewerFollowedAt fansCount }
  viewer { id followingCount mutualCount }
  errors { code message }
`;

interface PayloadUser {
  __typename: "User";
  id: string;
  relationship: Relationship;
  viewerIsFollowing: boolean;
  isFollowingViewer: boolean;
  viewerFollowedAt: string | null;
  fansCount: number;
}

interface PayloadViewer {
  __typename: "User";
  id: string;
  followingCount: number;
  mutualCount: number;
}

export interface FollowPayload {
  __typename: "FollowPayload";
  changed: boolean;
  relationship: Relationship | null;
  user: PayloadUser | null;
  viewer: PayloadViewer | null;
  errors: (UserError & { __typename: "UserError" })[];
}

type FollowData = { follow: FollowPayload };
type UnfollowData = { unfollow: FollowPayload };
type Variables = { userId: string };

export const FOLLOW: TypedDocumentNode<FollowData, Variables> = gql`
  mutation Follow($userId: ID!) {
    follow(input: { userId: $userId }) { ${PAYLOAD_FIELDS} }
  }
`;

export const UNFOLLOW: TypedDocumentNode<UnfollowData, Variables> = gql`
  mutation Unfollow($userId: ID!) {
    unfollow(input: { userId: $userId }) { ${PAYLOAD_FIELDS} }
  }
`;

const VIEWER_COUNTS: TypedDocumentNode<{ followingCount: number; mutualCount: number }> = gql`
  fragment FollowViewerCounts on User {
    followingCount
    mutualCount
  }
`;

/** The payload the server will send for `action` on `target`: shown at once, replaced by the real one. */
export function optimisticPayload(
  target: FollowTarget,
  action: FollowAction,
  viewer: { id: string; followingCount: number; mutualCount: number } | null,
): FollowPayload {
  const before = target.relationship;
  const after = nextRelationship(before, action);
  const changed = after !== before;
  const step = changed ? (action === "follow" ? 1 : -1) : 0;
  const mutualStep = (after === "MUTUAL" ? 1 : 0) - (before === "MUTUAL" ? 1 : 0);
  return {
    __typename: "FollowPayload",
    changed,
    relationship: after,
    user: {
      __typename: "User",
      id: target.id,
      relationship: after,
      viewerIsFollowing: viewerFollows(after),
      isFollowingViewer: followsViewer(after),
      viewerFollowedAt: viewerFollows(after) ? new Date().toISOString() : null,
      fansCount: target.fansCount + step,
    },
    viewer: viewer && {
      __typename: "User",
      id: viewer.id,
      followingCount: viewer.followingCount + step,
      mutualCount: viewer.mutualCount + mutualStep,
    },
    errors: [],
  };
}

/**
 * Follow / unfollow with an optimistic update. The counts and every badge change at once; the
 * server's payload then replaces the guess (or, on an error, the guess is rolled back). Lists
 * whose members changed (the viewer's following and mutuals, the user's fans and mutuals) are
 * evicted, so they are fetched again the next time they are shown.
 */
export function useFollow(target: FollowTarget) {
  const client = useApolloClient();
  const viewer = useViewer();
  const [follow] = useMutation(FOLLOW);
  const [unfollow] = useMutation(UNFOLLOW);
  const [error, setError] = useState<string | null>(null);

  async function run(action: FollowAction): Promise<void> {
    setError(null);
    const viewerRef = client.cache.identify({ __typename: "User", id: viewer.id });
    const counts = client.cache.readFragment({ id: viewerRef, fragment: VIEWER_COUNTS });
    const optimistic = optimisticPayload(target, action, counts && { id: viewer.id, ...counts });
    try {
      const variables = { userId: target.userId };
      const payload =
        action === "follow"
          ? (await follow({ variables, optimisticResponse: { follow: optimistic } })).data?.follow
          : (await unfollow({ variables, optimisticResponse: { unfollow: optimistic } })).data?.unfollow;
      const userError = payload?.errors[0];
      if (userError) {
        setError(userErrorText(userError));
        return;
      }
      if (payload?.changed) {
        const userRef = client.cache.identify({ __typename: "User", id: target.id });
        for (const fieldName of ["fans", "mutuals"]) client.cache.evict({ id: userRef, fieldName });
        for (const fieldName of ["following", "mutuals"]) client.cache.evict({ id: viewerRef, fieldName });
        client.cache.gc();
      }
    } catch (caught) {
      setError(apiProblem(caught).message);
    }
  }

  return { run, error };
}
