package discover

// The config the tests generate names source types: register them.
import _ "github.com/jobwatch/jobwatch/sources/all"
