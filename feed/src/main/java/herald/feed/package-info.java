/** The standalone entry point of herald.feed (the service itself is Clojure, in {@code herald.feed}). */
package herald.feed;
