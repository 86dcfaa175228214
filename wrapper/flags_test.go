package wrapper

import "testing"

// TestEveryRunFlagTakesAValue: discover reads a jobwatch run command line
// taking the word after a flag it does not know as that flag's value; a
// switch (a flag without a value) would make it read the flag after it as
// the command.
func TestEveryRunFlagTakesAValue(t *testing.T) {
	for _, fl := range RunFlagTable {
		if fl.PlaceHolder == "" {
			t.Errorf("--%s takes no value: discover's reading of jobwatch run (discover/command.go, jobwatchRun) must learn it", fl.Name)
		}
	}
}
