// Package e2e holds the end-to-end test of jobwatch's bundled alert rules and
// dashboard: the real jobwatch binary scraped by Debian's prometheus, which
// loads alerts/jobwatch.rules.yml and sends to Debian's
// prometheus-alertmanager.
package e2e
