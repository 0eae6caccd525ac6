import { ActionGroup } from "../follow/ActionGroup";
import { type FollowTarget, useFollow } from "../follow/useFollow";

/** Accept / Reject of a pending follow request to the viewer (a locked account's Requests tab). */
export function RequestButtons({ user }: { user: FollowTarget }) {
  const { run, error } = useFollow(user);
  return (
    <ActionGroup error={error}>
      <button type="button" className="button" data-action="accept" onClick={() => void run("acceptFollowRequest")}>
        Accept
      </button>{" "}
      <button
        type="button"
        className="button button-secondary"
        data-action="reject"
        onClick={() => void run("rejectFollowRequest")}
      >
        Reject
      </button>
    </ActionGroup>
  );
}
