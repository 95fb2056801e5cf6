// Package static holds the CSS, JavaScript and images served at /static,
// embedded in the binary so pages work with no internet.
package static

import "embed"

// Files are the embedded assets.
//
//go:embed *.css *.js *.svg *.ico
var Files embed.FS
