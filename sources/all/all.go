// Package all registers every type of source, and every service (the
// check-in receiver): import it for its side effect. Adding a type of
// source is one new package under sources/ and one line here.
package all

import (
	_ "github.com/jobwatch/jobwatch/sources/checkin"
	_ "github.com/jobwatch/jobwatch/sources/journal"
	_ "github.com/jobwatch/jobwatch/sources/locks"
	_ "github.com/jobwatch/jobwatch/sources/mysql"
	_ "github.com/jobwatch/jobwatch/sources/runlog"
)
