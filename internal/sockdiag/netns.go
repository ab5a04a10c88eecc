package sockdiag

import (
	"os"
	"slices"
)

// netnsDirs are where ip netns keeps its named namespaces (/var/run/netns
// on systems from before /run).
var netnsDirs = []string{"/run/netns", "/var/run/netns"}

// NamespaceNames lists the named network namespaces (ip netns list), the
// names watch --netns takes, sorted; none where there are none.
func NamespaceNames() []string { return namespaceNamesIn(netnsDirs...) }

func namespaceNamesIn(dirs ...string) []string {
	var names []string
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // no such directory: no named namespaces there
		}
		for _, e := range entries {
			if !slices.Contains(names, e.Name()) {
				names = append(names, e.Name())
			}
		}
	}
	slices.Sort(names)
	return names
}
