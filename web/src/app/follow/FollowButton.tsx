import { viewerFollows } from "./relationship";
import { type FollowTarget, useFollow } from "./useFollow";

/** Follow / Following (unfollow on click) for one user; nothing for the viewer themselves. */
export function FollowButton({ user }: { user: FollowTarget }) {
  const { run, error } = useFollow(user);
  if (user.relationship === "SELF") return null;
  const following = viewerFollows(user.relationship);
  const label = following ? "Unfollow" : user.relationship === "FOLLOWED_BY" ? "Follow back" : "Follow";
  return (
    <span className="follow">
      <button
        type="button"
        className={following ? "button button-secondary" : "button"}
        data-action={following ? "unfollow" : "follow"}
        onClick={() => void run(following ? "unfollow" : "follow")}
      >
        {label}
      </button>
      {error && (
        <span role="alert" className="error-inline">
          {error}
        </span>
      )}
    </span>
  );
}
