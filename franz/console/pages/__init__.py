"""The console's pages, one module per area; each exposes ``routes()`` and ``NAV`` (the
(label, path) entries it adds to the navigation bar). ``franz.console.app.PAGES`` lists them."""
