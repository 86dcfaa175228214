// The jobwatch monitoring mixin: Prometheus alerts and a Grafana dashboard
// for jobwatch, configured through _config (see config.libsonnet).
// alerts/jobwatch.rules.yml and dashboards/jobwatch.json are generated
// from it with `go generate ./mixin`.
(import 'config.libsonnet') +
(import 'alerts/alerts.libsonnet') +
(import 'dashboards/dashboards.libsonnet')
