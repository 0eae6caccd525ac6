"""Whom the demo's pages are signed in as unless they ask for another user: the demo graph
(cli/demo.py) gives this user follow requests, blocks and mutes to show, and GET /demo/token
(transport/web.py) hands out their token. A module of its own, so that the command line that loads
the graph does not load the web app's routes with it."""

DEMO_VIEWER = "42"
