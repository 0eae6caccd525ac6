/** The query GraphiQL opens with: the viewer, then a page of user 1's fans seen from the viewer. */
export const EXAMPLE_QUERY = `# Welcome to FollowGraph. Run this with the ▶ button (Ctrl-Enter).
# The Headers pane carries the viewer's token; without one, relationships are NONE.
query FansOfUser1 {
  viewer {
    userId
    name
    followingCount
    fansCount
    newFansCount
  }
  user(userId: "1") {
    name
    fansCount
    fans(first: 10) {
      edges {
        cursor
        followedAt
        relationship
        node { userId name fansCount }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}
`;
