import { gql, type TypedDocumentNode } from "@apollo/client";

import { USER_ROW_FRAGMENT, type UserRowEdge } from "./UserRow";

export const PAGE_SIZE = 20;

export const CONNECTION_FRAGMENT = gql`
  fragment FollowList_connection on FollowConnection {
    totalCount
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
  edges: UserRowEdge[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export type ListData = { user: ({ id: string } & Record<string, Connection | string>) | null };
export type ListVariables = { userId: string; first: number; after?: string | null };

/** A list shown as a tab of a profile. */
export interface ListTab {
  key: string;
  label: string;
  /** The User field holding the list. */
  field: string;
  query: TypedDocumentNode<ListData, ListVariables>;
  /** Shown only on the viewer's own profile (pending requests, blocks, ...). */
  viewerOnly?: boolean;
}

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

/**
 * The profile's tabs. Requests (`followRequests`), blocks (`blocking`) and mutes slot in here as
 * more entries with `viewerOnly: true` once the API has them; the list component is the same.
 */
export const TABS: ListTab[] = [
  { key: "following", label: "Following", field: "following", query: listQuery("FollowingTab", "following") },
  { key: "fans", label: "Fans", field: "fans", query: listQuery("FansTab", "fans") },
  { key: "mutuals", label: "Mutuals", field: "mutuals", query: listQuery("MutualsTab", "mutuals") },
];
