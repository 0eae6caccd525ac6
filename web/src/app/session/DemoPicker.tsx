import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";

import { countOf } from "../ui/plural";

// A few users of the demo graph: 1 is its biggest celebrity, 42 the default viewer.
export const DEMO_USERS = ["42", "1", "2", "7", "100", "1000"];

const DEMO_PICKER: TypedDocumentNode<
  { users: ({ id: string; userId: string; name: string | null; fansCount: number } | null)[] },
  { userIds: string[] }
> = gql`
  query DemoPicker($userIds: [ID!]!) {
    users(userIds: $userIds) {
      id
      userId
      name
      fansCount
    }
  }
`;

/** Demo mode only: act as another demo user (the server hands out their token). */
export function DemoPicker({ current, onPick }: { current: string; onPick: (userId: string) => void }) {
  const { data } = useQuery(DEMO_PICKER, { variables: { userIds: DEMO_USERS } });
  const users = (data?.users ?? []).filter((user) => user !== null);
  return (
    <label className="demo-picker">
      <span className="muted">Demo user</span>
      <select value={current} onChange={(event) => onPick(event.target.value)} aria-label="Demo user">
        {!users.some((user) => user.userId === current) && <option value={current}>{current}</option>}
        {users.map((user) => (
          <option key={user.userId} value={user.userId}>
            {user.name} (@{user.userId}, {countOf(user.fansCount, "fan")})
          </option>
        ))}
      </select>
    </label>
  );
}
