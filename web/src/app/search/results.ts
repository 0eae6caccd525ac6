import { gql } from "@apollo/client";

import type { Relationship } from "../follow/relationship";
import { FOLLOW_TARGET_FRAGMENT, type FollowTarget } from "../follow/useFollow";

/** A person a search found, as the box and the search page show them. */
export interface SearchEdge {
  cursor: string;
  relationship: Relationship;
  node: FollowTarget & { name: string | null; avatarUrl: string | null };
}

export const SEARCH_EDGE_FRAGMENT = gql`
  fragment SearchResult_edge on UserSearchEdge {
    cursor
    relationship
    node {
      id
      userId
      name
      avatarUrl
      ...FollowButton_user
    }
  }
  ${FOLLOW_TARGET_FRAGMENT}
`;
