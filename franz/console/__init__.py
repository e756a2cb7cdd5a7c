"""``franz console``: a web console for any Kafka-compatible cluster (issue 21).

What operators use most in AKHQ, kafbat kafka-ui and Redpanda Console
(``shared/notes/feature-anchors.md`` 5.2): the cluster overview, topics, the message
browser, consumer groups with their lag, topic and offset operations, live charts, ACLs and
users. It is a Kafka *client*: it speaks the Kafka protocol to ``--bootstrap-server`` (Franz
or Apache Kafka alike) through confluent-kafka (librdkafka) and, for what librdkafka lacks
(DescribeLogDirs, ...), ``franz.admin``'s own wire client; it never reaches into a broker.

Design (decided for issue 21):

* **Server-rendered pages** (Starlette + Jinja2, served by uvicorn): every page is complete
  HTML from the server, readable without JavaScript, fast on a cluster with 1,000 topics
  (one Metadata and one ListOffsets round for the topic list, no per-topic requests).
* **Small client-side updates** in ``static/console.js`` (no framework, nothing fetched from
  the internet): an element with ``data-refresh="<url>"`` and ``data-every="<ms>"`` has its
  inner HTML replaced by the fragment at that URL (live charts, lag); a form with
  ``data-confirm="<text>"`` asks before it submits (destructive actions).
* **Layout**: ``app.create_app`` builds the Starlette app from the page modules under
  ``franz.console.pages`` (each exposes ``routes()``); templates in ``templates/`` extend
  ``base.html``; ``cluster.ConsoleCluster`` is the one object that talks to the cluster,
  its blocking librdkafka calls run on worker threads (``asyncio.to_thread`` /
  ``asyncio.wrap_future``) so pages never block each other.
* Bound to 127.0.0.1 by default: the console has no login of its own; whoever reaches it
  acts with the console's client credentials (``--command-config``).
"""
