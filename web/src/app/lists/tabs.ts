import { gql, type TypedDocumentNode } from "@apollo/client";

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

/** A list shown as a tab of a profile. */
export interface ListTab {
  kind: "list";
  key: string;
  label: string;
  /** The User field holding the list. */
  field: string;
  query: TypedDocumentNode<ListData, ListVariables>;
  /** Shown only on the viewer's own profile (the API answers null to anyone else). */
  viewerOnly?: boolean;
  /** The buttons on each entry. */
  controls: RowControls;
  /** What an empty list says. */
  empty: string;
}

/** The viewer's suggestions: a plain list, not a connection (suggestions/Suggestions.tsx). */
export interface SuggestionsTab {
  kind: "suggestions";
  key: string;
  label: string;
  viewerOnly: true;
}

export type ProfileTab = ListTab | SuggestionsTab;

function listQuery(name: string, field: string): TypedDocumentNode<ListData, ListVariables> {
  return gql`
    query ${name}($userId: ID!, $first: Int!, $after: String) {
      user(userId: $userId) {
        id
        ${field}(first: $first, after: $after) {
          ...FollowList_connection
        }
      }
    }
    ${CONNECTION_FRAGMENT}
  `;
}

function list(
  key: string,
  label: string,
  field: string,
  {
    controls = "follow",
    viewerOnly = false,
    empty = "Nobody here yet.",
  }: Partial<Pick<ListTab, "controls" | "viewerOnly" | "empty">> = {},
): ListTab {
  const name = `${field[0]!.toUpperCase()}${field.slice(1)}Tab`;
  return { kind: "list", key, label, field, query: listQuery(name, field), controls, viewerOnly, empty };
}

/** The profile's tabs; the viewer's own profile also shows their requests, blocks, mutes and suggestions. */
export const TABS: ProfileTab[] = [
  list("following", "Following", "following"),
  list("fans", "Fans", "fans"),
  list("mutuals", "Mutuals", "mutuals"),
  list("requests", "Requests", "followRequests", {
    controls: "request",
    viewerOnly: true,
    empty: "No pending requests.",
  }),
  list("blocking", "Blocked", "blocking", { controls: "block", viewerOnly: true, empty: "You block nobody." }),
  list("muting", "Muted", "muting", { controls: "mute", viewerOnly: true, empty: "You mute nobody." }),
  { kind: "suggestions", key: "suggestions", label: "Suggested", viewerOnly: true },
];
