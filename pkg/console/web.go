package console

import "embed"

// webFS is the page: plain HTML, CSS and JavaScript, no build step.
//
//go:embed web
var webFS embed.FS
