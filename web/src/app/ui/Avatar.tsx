/**
 * A user's picture. Remote avatar URLs are shown only when they are on this server's origin:
 * the demo's avatars live on a public service, and the app makes no request to another host.
 * Set `allowRemote` where your product serves avatars from its own CDN.
 */
export function Avatar({
  userId,
  name,
  url,
  size = 40,
  allowRemote = false,
}: {
  userId: string;
  name: string | null;
  url: string | null;
  size?: number;
  allowRemote?: boolean;
}) {
  const style = { width: size, height: size, fontSize: size * 0.4 };
  if (url && (allowRemote || new URL(url, location.href).origin === location.origin)) {
    return <img className="avatar" src={url} alt="" style={style} />;
  }
  const initials = (name ?? userId)
    .split(/\s+/)
    .map((part) => part[0] ?? "")
    .join("")
    .slice(0, 2)
    .toUpperCase();
  const hue = [...userId].reduce((sum, c) => sum + c.charCodeAt(0) * 37, 0) % 360;
  // Dark enough for white initials at 4.5:1 whatever the hue (yellow is the lightest).
  return (
    <span className="avatar" aria-hidden style={{ ...style, background: `hsl(${hue} 45% 32%)` }}>
      {initials}
    </span>
  );
}
