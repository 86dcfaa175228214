// The jobwatch dashboards, keyed by file name as mixins do.
local jobwatch = import 'jobwatch.libsonnet';

{
  grafanaDashboards+:: {
    'jobwatch.json': jobwatch.dashboard($._config),
  },
}
