import { type ApolloCache, gql, type TypedDocumentNode } from "@apollo/client";

import type { UserError } from "../apollo/errors";
import type { AccountState } from "./state";

/** An AccountPayload: the account after the call (null once deleted), its state, and user errors. */
export interface AccountPayload {
  state: AccountState | null;
  user: { __typename: "User"; id: string; accountState: AccountState } | null;
  errors: UserError[];
}

export const DEACTIVATE_ACCOUNT: TypedDocumentNode<{ deactivateAccount: AccountPayload }> = gql`
  mutation DeactivateAccount {
    deactivateAccount {
      state
      user {
        id
        accountState
      }
      errors {
        code
        message
      }
    }
  }
`;

export const REACTIVATE_ACCOUNT: TypedDocumentNode<{ reactivateAccount: AccountPayload }> = gql`
  mutation ReactivateAccount {
    reactivateAccount {
      state
      user {
        id
        accountState
      }
      errors {
        code
        message
      }
    }
  }
`;

export const DELETE_ACCOUNT: TypedDocumentNode<{ deleteAccount: AccountPayload }> = gql`
  mutation DeleteAccount {
    deleteAccount {
      state
      errors {
        code
        message
      }
    }
  }
`;

/**
 * Writes the viewer's new state into the cache, which switches the app to the screen of an account
 * that is off (or back): also when the payload's `user` is null and only `state` says it.
 */
export function noteAccountState(cache: ApolloCache, viewerId: string, state: AccountState | null): void {
  if (state === null) return;
  cache.modify({
    id: cache.identify({ __typename: "User", id: viewerId }),
    fields: { accountState: () => state },
  });
}
