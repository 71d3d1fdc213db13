/** Response body types for static files: a slice of a file and a multipart body of slices (Range answers). */
package herald.http.files;
