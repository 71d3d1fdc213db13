/**
 * Window state of herald.flow's in-process runtime: mutable extents owned by one task thread each.
 */
package herald.flow.window;
