(ns herald.feed.store.scale.spi
  "What the `:scale` store (herald.feed.store.scale) asks of the backends it composes, beyond the role protocols
  of herald.feed.store.graph, .feeds, .search and .cache.

  The `:scale` store gives each data role to a real server:

  | config key | role protocols (herald.feed.store.<role>) | backend (`:type`)                    |
  |------------|------------------------------------------|--------------------------------------|
  | :graph     | ParticipantStore, FriendStore            | :postgres (herald.feed.store.postgres) |
  | :feeds     | OutboundStore, InboundStore, PostLog     | :cassandra (herald.feed.store.cassandra) |
  | :search    | SearchIndex, IndexProgress               | :opensearch (herald.feed.store.opensearch) |
  | :cache     | Cache                                    | :redis (herald.feed.store.redis)     |

  A role given `{:type :memory}` (or left out) is served by one shared in-memory store, so a test can put one
  real server behind one role. Each backend namespace has a public `open` taking that role's config map (without
  :type) and returning an object that implements the role's protocols and herald.feed.store.lifecycle/Lifecycle
  (-close! -ready? -stats).

  How the :scale store uses this SPI: on open it reads the search backend's -indexed-through once, then calls
  -posts-after on :feeds from that mark in batches of :catch-up-batch (500), passing each batch to -index-batch!
  and storing the batch's last :ts with -set-indexed-through!; while open it calls -set-indexed-through! at most
  every :index-mark-ms (1 s) when the mark moved, and -post on :feeds for posts left unindexed for
  :index-retry-ms. The mark assumes the :ts a :feeds backend assigns strictly increase (across restarts too)
  and that one store instance writes to the pair."
  )

(set! *warn-on-reflection* true)

(defprotocol PostLog
  "Implemented by a :feeds backend: the published posts in publication order, so the :scale store can bring a
  search backend up to date after a crash (the index is derived data)."
  (-posts-after [feeds ts limit]
    "Up to limit stored posts (full post maps) with :ts strictly greater than ts, ascending by :ts."))

(defprotocol IndexProgress
  "Implemented by a :search backend: a durable mark of how far the index is known to be complete."
  (-indexed-through [search]
    "The last value stored by -set-indexed-through!, or 0 when none was stored.")
  (-set-indexed-through! [search ts]
    "Durably records that every post with :ts <= ts is indexed (the :scale store calls it only with a ts below
    which no post is waiting to be indexed)."))
