/**
 * Validated, immutable server configuration: {@link herald.http.config.ServerConfig} and the enums it uses.
 * The Clojure API turns the user's option map into one of these; the Java core never reads a Clojure map
 * for options.
 */
package herald.http.config;
