import { gql, type TypedDocumentNode } from "@apollo/client";
import { useApolloClient } from "@apollo/client/react";
import { type MouseEvent, useRef, useState } from "react";

import { apiProblem, type UserError, userErrorText } from "../apollo/errors";
import { useViewer } from "../session/ViewerContext";
import { spareShownList } from "../lists/shown";
import { applyListChanges, listChanges } from "./cacheUpdates";
import {
  followsViewer,
  nextState,
  type RelationAction,
  type Relationship,
  type RelationState,
  viewerFollows,
} from "./relationship";

/** What the follow, block and mute buttons need of the user they stand for. */
export interface FollowTarget extends RelationState {
  __typename?: "User";
  id: string;
  userId: string;
  /** For the buttons' names ("Follow Jing Xu"); @userId without it. */
  name?: string | null;
  fansCount: number;
  followingCount: number;
  mutualCount: number;
}

export const FOLLOW_TARGET_FRAGMENT = gql`
  fragment FollowButton_user on User {
    id
    userId
    name
    relationship
    fansCount
    followingCount
    mutualCount
    isLocked
    viewerRequestedFollow
    requestedFollowViewer
    viewerBlocks
    viewerMutes
    blocksViewer
  }
`;

// The payload returns every field a relation mutation can change, so the normalized cache updates
// the user and the viewer wherever they are shown, and edges follow their node (apollo/cache.ts).
const PAYLOAD_FRAGMENT = gql`
  fragment RelationPayload on FollowPayload {
    changed
    relationship
    pending
    user {
      id
      relationship
      viewerIsFollowing
      isFollowingViewer
      viewerFollowedAt
      fansCount
      followingCount
      mutualCount
      viewerRequestedFollow
      requestedFollowViewer
      viewerBlocks
      viewerMutes
    }
    viewer {
      id
      followingCount
      fansCount
      mutualCount
      followRequestCount
    }
    errors {
      code
      message
    }
  }
`;

interface PayloadUser {
  __typename: "User";
  id: string;
  relationship: Relationship;
  viewerIsFollowing: boolean;
  isFollowingViewer: boolean;
  viewerFollowedAt: string | null;
  fansCount: number;
  followingCount: number;
  mutualCount: number;
  viewerRequestedFollow: boolean;
  requestedFollowViewer: boolean;
  viewerBlocks: boolean;
  viewerMutes: boolean;
}

/** The viewer's counts a relation mutation changes. */
export interface ViewerCounts {
  followingCount: number;
  fansCount: number;
  mutualCount: number;
  followRequestCount: number | null;
}

export interface FollowPayload {
  __typename: "FollowPayload";
  changed: boolean;
  relationship: Relationship | null;
  pending: boolean;
  user: PayloadUser | null;
  viewer: ({ __typename: "User"; id: string } & ViewerCounts) | null;
  errors: (UserError & { __typename: "UserError" })[];
}

type Variables = { userId: string };
/** A mutation's data: its one field, named after the action. */
type PayloadData<A extends RelationAction> = { [K in A]: FollowPayload };

type RelationMutation<A extends RelationAction> = TypedDocumentNode<PayloadData<A>, Variables>;

// Each written out whole, not built from the action's name: a build reads the app's operations
// from its sources into the trusted-documents manifest (persisted-query-manifest.config.json).
export const FOLLOW: RelationMutation<"follow"> = gql`
  mutation Follow($userId: ID!) { follow(input: { userId: $userId }) { ...RelationPayload } }
  ${PAYLOAD_FRAGMENT}
`;
export const UNFOLLOW: RelationMutation<"unfollow"> = gql`
  mutation Unfollow($userId: ID!) { unfollow(input: { userId: $userId }) { ...RelationPayload } }
  ${PAYLOAD_FRAGMENT}
`;

const MUTATIONS: { [A in RelationAction]: RelationMutation<A> } = {
  follow: FOLLOW,
  unfollow: UNFOLLOW,
  removeFan: gql`
    mutation RemoveFan($userId: ID!) { removeFan(input: { userId: $userId }) { ...RelationPayload } }
    ${PAYLOAD_FRAGMENT}
  `,
  block: gql`
    mutation Block($userId: ID!) { block(input: { userId: $userId }) { ...RelationPayload } }
    ${PAYLOAD_FRAGMENT}
  `,
  unblock: gql`
    mutation Unblock($userId: ID!) { unblock(input: { userId: $userId }) { ...RelationPayload } }
    ${PAYLOAD_FRAGMENT}
  `,
  mute: gql`
    mutation Mute($userId: ID!) { mute(input: { userId: $userId }) { ...RelationPayload } }
    ${PAYLOAD_FRAGMENT}
  `,
  unmute: gql`
    mutation Unmute($userId: ID!) { unmute(input: { userId: $userId }) { ...RelationPayload } }
    ${PAYLOAD_FRAGMENT}
  `,
  acceptFollowRequest: gql`
    mutation AcceptFollowRequest($userId: ID!) {
      acceptFollowRequest(input: { userId: $userId }) { ...RelationPayload }
    }
    ${PAYLOAD_FRAGMENT}
  `,
  rejectFollowRequest: gql`
    mutation RejectFollowRequest($userId: ID!) {
      rejectFollowRequest(input: { userId: $userId }) { ...RelationPayload }
    }
    ${PAYLOAD_FRAGMENT}
  `,
};

// The user as the viewer sees them now: fetched again after a BLOCKED answer, since the cache
// cannot know of a block the other user made after the profile was loaded.
const RELATION_STATE: TypedDocumentNode<{ user: FollowTarget | null }, Variables> = gql`
  query RelationState($userId: ID!) {
    user(userId: $userId) {
      ...FollowButton_user
    }
  }
  ${FOLLOW_TARGET_FRAGMENT}
`;

const VIEWER_COUNTS: TypedDocumentNode<ViewerCounts> = gql`
  fragment RelationViewerCounts on User {
    followingCount
    fansCount
    mutualCount
    followRequestCount
  }
`;

const delta = (after: boolean, before: boolean) => Number(after) - Number(before);

/** The payload the server will send for `action` on `target`: shown at once, replaced by the real one. */
export function optimisticPayload(
  target: FollowTarget,
  action: RelationAction,
  viewer: ({ id: string } & ViewerCounts) | null,
): FollowPayload {
  const { state: after, pending } = nextState(target, action);
  const before = target.relationship;
  // Every count follows from the relationship and the requests, before and after.
  const follows = delta(viewerFollows(after.relationship), viewerFollows(before));
  const followed = delta(followsViewer(after.relationship), followsViewer(before));
  const mutual = delta(after.relationship === "MUTUAL", before === "MUTUAL");
  const requests = delta(after.requestedFollowViewer, target.requestedFollowViewer);
  const changed = (Object.keys(after) as (keyof RelationState)[]).some((key) => after[key] !== target[key]);
  return {
    __typename: "FollowPayload",
    changed,
    relationship: after.relationship,
    pending,
    user: {
      __typename: "User",
      id: target.id,
      relationship: after.relationship,
      viewerIsFollowing: viewerFollows(after.relationship),
      isFollowingViewer: followsViewer(after.relationship),
      viewerFollowedAt: viewerFollows(after.relationship) ? new Date().toISOString() : null,
      fansCount: target.fansCount + follows,
      followingCount: target.followingCount + followed,
      mutualCount: target.mutualCount + mutual,
      viewerRequestedFollow: after.viewerRequestedFollow,
      requestedFollowViewer: after.requestedFollowViewer,
      viewerBlocks: after.viewerBlocks,
      viewerMutes: after.viewerMutes,
    },
    viewer: viewer && {
      __typename: "User",
      id: viewer.id,
      followingCount: viewer.followingCount + follows,
      fansCount: viewer.fansCount + followed,
      mutualCount: viewer.mutualCount + mutual,
      followRequestCount: viewer.followRequestCount === null ? null : viewer.followRequestCount + requests,
    },
    errors: [],
  };
}

/** How a change is made. */
export interface RunOptions {
  /** It takes back the change just made from the same list (Undo): the list keeps its entries. */
  undo?: boolean;
}

/**
 * A click handler that ignores the second click of a double click (and the third...): on a fast
 * server the first click's change is already done, and its button already says the opposite.
 */
export function singleClick(handler: () => unknown): (event: MouseEvent) => void {
  return (event) => {
    if (event.detail > 1) return;
    void handler();
  };
}

/**
 * Follow, unfollow, remove a fan, block, mute, and answers to follow requests, each with an
 * optimistic update: badges, buttons and counts change at once; the server's payload then replaces
 * the guess (or, on an error, the guess is rolled back). Then the lists the change affected are
 * evicted or patched (follow/cacheUpdates.ts). One change at a time: `busy` is true while one is in
 * flight, and its buttons are off (aria-disabled, so that focus stays on them).
 */
export function useFollow(target: FollowTarget) {
  const client = useApolloClient();
  const viewer = useViewer();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // Set at once, not at the next render: two clicks in one frame see it.
  const inFlight = useRef(false);

  async function run(action: RelationAction, { undo = false }: RunOptions = {}): Promise<FollowPayload | null> {
    if (inFlight.current) return null;
    inFlight.current = true;
    setBusy(true);
    setError(null);
    const viewerRef = client.cache.identify({ __typename: "User", id: viewer.id });
    const counts = client.cache.readFragment({ id: viewerRef, fragment: VIEWER_COUNTS });
    // The user as the cache has them now: an Undo runs after the change it takes back.
    const current =
      client.cache.readFragment<FollowTarget>({
        id: client.cache.identify({ __typename: "User", id: target.id }),
        fragment: FOLLOW_TARGET_FRAGMENT,
        fragmentName: "FollowButton_user",
      }) ?? target;
    const optimistic = optimisticPayload(current, action, counts && { id: viewer.id, ...counts });
    try {
      // One of the documents, each typed with its own field.
      const mutation = MUTATIONS[action] as TypedDocumentNode<Partial<PayloadData<RelationAction>>, Variables>;
      const { data } = await client.mutate({
        mutation,
        variables: { userId: target.userId },
        optimisticResponse: { [action]: optimistic },
      });
      const payload = data?.[action];
      const userError = payload?.errors[0];
      if (userError) {
        setError(userErrorText(userError));
        if (userError.code === "BLOCKED") {
          // blocksViewer comes into the cache: the Follow button turns into why it cannot be used.
          void client
            .query({ query: RELATION_STATE, variables: { userId: target.userId }, fetchPolicy: "network-only" })
            .catch(() => {});
        }
        return null;
      }
      if (payload?.changed) {
        const followChanged = payload.relationship !== current.relationship;
        const adds = !undo && (action === "follow" || action === "acceptFollowRequest");
        applyListChanges(
          client.cache,
          listChanges(action, followChanged),
          { viewer: viewer.id, user: target.id },
          (ref, field) => spareShownList(ref, field, adds ? "evict" : "prune"),
        );
      }
      return payload ?? null;
    } catch (caught) {
      setError(apiProblem(caught).message);
      return null;
    } finally {
      inFlight.current = false;
      setBusy(false);
    }
  }

  return { run, error, busy };
}
