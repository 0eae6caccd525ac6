import { type FollowTarget, useFollow } from "./useFollow";

/** Block / Unblock. Blocking ends the follows both ways and any requests; unblocking restores none. */
export function BlockButton({ user }: { user: FollowTarget }) {
  const { run, error } = useFollow(user);
  if (user.relationship === "SELF") return null;
  const action = user.viewerBlocks ? "unblock" : "block";
  return (
    <span className="follow">
      <button type="button" className="button button-quiet" data-action={action} onClick={() => void run(action)}>
        {user.viewerBlocks ? "Unblock" : "Block"}
      </button>
      {error && (
        <span role="alert" className="error-inline">
          {error}
        </span>
      )}
    </span>
  );
}

/** Mute / Unmute: the graph stays as it is; a muted user's events are no longer pushed to the viewer. */
export function MuteButton({ user }: { user: FollowTarget }) {
  const { run, error } = useFollow(user);
  if (user.relationship === "SELF") return null;
  const action = user.viewerMutes ? "unmute" : "mute";
  return (
    <span className="follow">
      <button type="button" className="button button-quiet" data-action={action} onClick={() => void run(action)}>
        {user.viewerMutes ? "Unmute" : "Mute"}
      </button>
      {error && (
        <span role="alert" className="error-inline">
          {error}
        </span>
      )}
    </span>
  );
}
