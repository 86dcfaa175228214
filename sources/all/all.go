// Package all registers every type of source, and every service (the
// check-in receiver): import it for its side effect. Adding a type of
// source is one new package under sources/ and one line here.
package all

import (
	_ "jobwatch/sources/checkin"
	_ "jobwatch/sources/journal"
	_ "jobwatch/sources/locks"
	_ "jobwatch/sources/mysql"
	_ "jobwatch/sources/runlog"
)
