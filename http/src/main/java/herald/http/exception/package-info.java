/** Exceptions the server core raises where callers must tell cases apart. */
package herald.http.exception;
