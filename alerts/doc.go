// Package alerts holds jobwatch's bundled Prometheus alerting rules
// (jobwatch.rules.yml, generated from the monitoring mixin in mixin/ by
// `go generate ./mixin`), their runbook (runbook.md) and their promtool unit
// tests (tests/). The files are embedded so that a command can print them.
package alerts

import _ "embed"

// Rules is alerts/jobwatch.rules.yml.
//
//go:embed jobwatch.rules.yml
var Rules []byte

// Runbook is alerts/runbook.md.
//
//go:embed runbook.md
var Runbook []byte
