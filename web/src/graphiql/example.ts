/** The query GraphiQL opens with: the viewer, then a page of user 1's fans seen from the viewer. */
export const EXAMPLE_QUERY = `# ▶ (Ctrl-Enter) runs it as the viewer
# whose token is in Headers.
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
