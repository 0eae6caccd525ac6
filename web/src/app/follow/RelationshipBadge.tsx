import { RELATIONSHIP_LABEL, type Relationship } from "./relationship";

/** The viewer's relationship to a user, as a small badge (nothing for NONE). */
export function RelationshipBadge({ relationship }: { relationship: Relationship }) {
  const label = RELATIONSHIP_LABEL[relationship];
  return (
    <span className={`badge badge-${relationship.toLowerCase()}`} data-relationship={relationship}>
      {label}
    </span>
  );
}
