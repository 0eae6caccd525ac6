import type { ReactNode } from "react";

import { FollowList } from "../lists/FollowList";
import { RECEIVED_REQUESTS, SENT_REQUESTS } from "../lists/tabs";
import { navigate, profileHash } from "../route";

/** A link to another list of the same panel: the page stays where it is scrolled. */
function Segment({ hash, current, name, children }: { hash: string; current: boolean; name: string; children: ReactNode }) {
  return (
    <a
      href={hash}
      aria-current={current ? "page" : undefined}
      data-segment={name}
      onClick={(event) => {
        event.preventDefault();
        navigate(hash, { replace: true });
      }}
    >
      {children}
    </a>
  );
}

/** The viewer's follow requests: those they received (Accept / Reject) and those they sent (Withdraw). */
export function RequestsPanel({
  userId,
  sent,
  received,
  onOpen,
}: {
  userId: string;
  sent: boolean;
  received: number | null;
  onOpen: (userId: string) => void;
}) {
  const list = sent ? SENT_REQUESTS : RECEIVED_REQUESTS;
  return (
    <>
      <nav className="segments" aria-label="Follow requests">
        <Segment hash={profileHash(userId, "requests")} current={!sent} name="received">
          Received{received != null && <span className="tab-count">{received.toLocaleString()}</span>}
        </Segment>
        <Segment hash={profileHash(userId, "sent")} current={sent} name="sent">
          Sent
        </Segment>
      </nav>
      <FollowList key={`${userId}/${list.key}`} tab={list} userId={userId} onOpen={onOpen} />
    </>
  );
}
