// Package all registers every type of source: import it for its side
// effect. Adding a type of source is one new package under sources/ and
// one line here.
package all

import (
	_ "jobwatch/sources/journal"
	_ "jobwatch/sources/locks"
	_ "jobwatch/sources/mysql"
	_ "jobwatch/sources/runlog"
)
