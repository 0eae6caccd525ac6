import { gql, type TypedDocumentNode } from "@apollo/client";
import { useQuery } from "@apollo/client/react";

import { countOf } from "../ui/plural";

// A few users of the demo graph (cli/demo.py): 1 is its biggest celebrity, 42 the default viewer
// (with a request to the locked 700, a block and a mute), 701 a locked account with pending requests
// to answer. Those the graph does not have (a small demo graph) are left out.
export const DEMO_USERS = ["42", "1", "2", "7", "100", "1000", "701"];

interface PickerUser {
  id: string;
  userId: string;
  name: string | null;
  fansCount: number;
  isLocked: boolean;
}

const DEMO_PICKER: TypedDocumentNode<{ users: (PickerUser | null)[] }, { userIds: string[] }> = gql`
  query DemoPicker($userIds: [ID!]!) {
    users(userIds: $userIds) {
      id
      userId
      name
      fansCount
      isLocked
    }
  }
`;

function optionText(user: Pick<PickerUser, "userId" | "name" | "fansCount" | "isLocked">): string {
  const details = [`@${user.userId}`, countOf(user.fansCount, "fan"), user.isLocked && "locked"].filter(Boolean);
  return `${user.name ?? `User ${user.userId}`} (${details.join(", ")})`;
}

/**
 * Demo mode only: act as another demo user (the server hands out their token). The viewer is
 * named even when not one of the picker's users (picked with ?user= in the URL, or before).
 */
export function DemoPicker({
  current,
  onPick,
}: {
  current: Pick<PickerUser, "userId" | "name" | "fansCount" | "isLocked">;
  onPick: (userId: string) => void;
}) {
  const { data } = useQuery(DEMO_PICKER, { variables: { userIds: DEMO_USERS } });
  const users = (data?.users ?? []).filter((user) => user !== null);
  return (
    <label className="demo-picker">
      <span className="muted">Demo user</span>
      <select value={current.userId} onChange={(event) => onPick(event.target.value)} aria-label="Demo user">
        {!users.some((user) => user.userId === current.userId) && (
          <option value={current.userId}>{optionText(current)}</option>
        )}
        {users.map((user) => (
          <option key={user.userId} value={user.userId}>
            {optionText(user)}
          </option>
        ))}
      </select>
    </label>
  );
}
