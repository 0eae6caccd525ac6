import { ActionGroup } from "../follow/ActionGroup";
import { type FollowTarget, singleClick, useFollow } from "../follow/useFollow";
import { displayName } from "../ui/names";

/** Accept / Reject of a pending follow request to the viewer (a locked account's Requests tab). */
export function RequestButtons({ user }: { user: FollowTarget }) {
  const { run, error, busy } = useFollow(user);
  const name = displayName(user);
  return (
    <ActionGroup error={error}>
      <button
        type="button"
        className="button"
        data-action="accept"
        aria-label={`Accept ${name}’s request`}
        aria-disabled={busy || undefined}
        onClick={singleClick(() => !busy && run("acceptFollowRequest"))}
      >
        Accept
      </button>
      <button
        type="button"
        className="button button-secondary"
        data-action="reject"
        aria-label={`Reject ${name}’s request`}
        aria-disabled={busy || undefined}
        onClick={singleClick(() => !busy && run("rejectFollowRequest"))}
      >
        Reject
      </button>
    </ActionGroup>
  );
}

/** On the viewer's sent requests: withdraws the request (an unfollow of a user only asked). */
export function WithdrawButton({ user }: { user: FollowTarget }) {
  const { run, error, busy } = useFollow(user);
  return (
    <ActionGroup error={error}>
      <button
        type="button"
        className="button button-secondary"
        data-action="withdraw"
        aria-label={`Withdraw your request to follow ${displayName(user)}`}
        aria-disabled={busy || undefined}
        onClick={singleClick(() => !busy && run("unfollow"))}
      >
        Withdraw
      </button>
    </ActionGroup>
  );
}
