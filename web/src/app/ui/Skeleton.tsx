/** Grey rows where a list's entries will be: the page keeps its shape while it loads. */
export function RowSkeletons({ count = 6 }: { count?: number }) {
  return (
    <div className="skeleton-list" aria-busy="true">
      <span className="visually-hidden" role="status">
        Loading…
      </span>
      <ul aria-hidden="true">
        {Array.from({ length: count }, (_, i) => (
          <li key={i} className="user-row skeleton-row">
            <span className="skeleton skeleton-avatar" />
            <span className="skeleton-lines">
              <span className="skeleton skeleton-line" style={{ width: `${40 + ((i * 17) % 30)}%` }} />
              <span className="skeleton skeleton-line skeleton-line-short" />
            </span>
            <span className="skeleton skeleton-button" />
          </li>
        ))}
      </ul>
    </div>
  );
}

/** A profile's header and first rows, grey, while the profile loads. */
export function ProfileSkeleton() {
  return (
    <section className="profile" data-skeleton="profile">
      <div className="profile-header" aria-hidden="true">
        <span className="skeleton skeleton-avatar skeleton-avatar-large" />
        <span className="skeleton-lines">
          <span className="skeleton skeleton-title" />
          <span className="skeleton skeleton-line skeleton-line-short" />
          <span className="skeleton skeleton-line" />
        </span>
      </div>
      <div className="tabs" aria-hidden="true">
        <span className="skeleton skeleton-tab" />
        <span className="skeleton skeleton-tab" />
        <span className="skeleton skeleton-tab" />
      </div>
      <RowSkeletons />
    </section>
  );
}
