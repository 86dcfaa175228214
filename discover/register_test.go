package discover

// The config the tests generate names source types: register them.
import _ "jobwatch/sources/all"
