import { gql, type TypedDocumentNode } from "@apollo/client";

import type { ListField } from "../follow/cacheUpdates";
import { type RowControls, USER_ROW_FRAGMENT, type UserRowEdge } from "./UserRow";

export const PAGE_SIZE = 20;

export const CONNECTION_FRAGMENT = gql`
  fragment FollowList_connection on FollowConnection {
    totalCount
    hidden
    edges {
      ...UserRow_edge
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
  ${USER_ROW_FRAGMENT}
`;

export interface Connection {
  totalCount: number;
  /** The owner does not show the list to the viewer (hidden list, locked account, block). */
  hidden: boolean;
  edges: UserRowEdge[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export type ListData = { user: ({ id: string } & Record<string, Connection | string | null>) | null };
export type ListVariables = { userId: string; first: number; after?: string | null };

/** A list of a user's: a tab of their profile, or a section of the viewer's settings. */
export interface ListTab {
  kind: "list";
  key: string;
  label: string;
  /** The User field holding the list. */
  field: ListField;
  query: TypedDocumentNode<ListData, ListVariables>;
  /** Shown only on the viewer's own profile (the API answers null to anyone else). */
  viewerOnly?: boolean;
  /** Shown only on other users' profiles (fansYouFollow of the viewer is nobody). */
  othersOnly?: boolean;
  /** The buttons on each entry. */
  controls: RowControls;
  /** What an empty list says. */
  empty: string;
  /** What an entry's time is, before its date: "Followed on". */
  since: string;
}

/** The viewer's suggestions: a plain list, not a connection (suggestions/Suggestions.tsx). */
export interface SuggestionsTab {
  kind: "suggestions";
  key: string;
  label: string;
  viewerOnly: true;
  othersOnly?: false;
}

export type ProfileTab = ListTab | SuggestionsTab;

// Every list's query is written out whole, not built from the field's name: a build reads the
// app's operations from its sources into the trusted-documents manifest (persisted-query-manifest.config.json).
type ListQuery = TypedDocumentNode<ListData, ListVariables>;

/** The lists that are connections (suggestions are a plain list). */
type ConnectionField = Exclude<ListField, "suggestions">;

const QUERIES: Record<ConnectionField, ListQuery> = {
  following: gql`
    query FollowingList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id following(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  fans: gql`
    query FansList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id fans(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  mutuals: gql`
    query MutualsList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id mutuals(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  fansYouFollow: gql`
    query FansYouFollowList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id fansYouFollow(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  followRequests: gql`
    query FollowRequestsList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id followRequests(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  sentFollowRequests: gql`
    query SentFollowRequestsList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id sentFollowRequests(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  blocking: gql`
    query BlockingList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id blocking(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
  muting: gql`
    query MutingList($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) { id muting(first: $first, after: $after) { ...FollowList_connection } }
    }
    ${CONNECTION_FRAGMENT}
  `,
};

function list(
  key: string,
  label: string,
  field: ConnectionField,
  {
    controls = "follow",
    viewerOnly = false,
    othersOnly = false,
    empty = "Nobody here yet.",
    since = "Followed on",
  }: Partial<Pick<ListTab, "controls" | "viewerOnly" | "othersOnly" | "empty" | "since">> = {},
): ListTab {
  return { kind: "list", key, label, field, query: QUERIES[field], controls, viewerOnly, othersOnly, empty, since };
}

export const RECEIVED_REQUESTS = list("requests", "Requests", "followRequests", {
  controls: "request",
  viewerOnly: true,
  empty: "No pending requests.",
  since: "Asked on",
});

export const SENT_REQUESTS = list("sent", "Sent", "sentFollowRequests", {
  controls: "sent",
  viewerOnly: true,
  empty: "You have no pending requests: a follow of a locked account waits here for their answer.",
  since: "Asked on",
});

/** The profile's tabs; the viewer's own profile also shows their requests and suggestions. */
export const TABS: ProfileTab[] = [
  list("following", "Following", "following"),
  list("fans", "Fans", "fans"),
  list("mutuals", "Mutuals", "mutuals", { since: "Mutual since" }),
  list("known", "Fans you know", "fansYouFollow", { othersOnly: true, empty: "None of their fans is someone you follow." }),
  // Received and sent requests share the tab (requests/RequestsPanel.tsx).
  RECEIVED_REQUESTS,
  { kind: "suggestions", key: "suggestions", label: "Suggested", viewerOnly: true },
];

/** Tab keys that open another tab: the sent requests are under Requests. */
export const TAB_OF: Record<string, string> = { sent: "requests" };

/** The viewer's blocks and mutes, in their settings. */
export const BLOCKED = list("blocked", "Blocked", "blocking", {
  controls: "block",
  viewerOnly: true,
  empty: "You block nobody.",
  since: "Blocked on",
});

export const MUTED = list("muted", "Muted", "muting", {
  controls: "mute",
  viewerOnly: true,
  empty: "You mute nobody.",
  since: "Muted on",
});
