// Reference miss counts for the simulator's `clockpro`, computed by an independent
// implementation: github.com/dgryski/go-clockpro (a port of pyclockpro, the implementation
// libCacheSim's ClockPro.c compares itself with). For each shipped trace traces/NAME.trace.gz
// and cache sizes of 100, 500 and 1000 blocks, it counts the references whose Get misses
// (each followed by a Set), and prints them as JSON; traces/clockpro_expected.json holds the
// output and crates/sim/tests/libcachesim_policies.rs compares.
//
// Re-run from this directory (Go 1.18 or later):
//
//	go mod init clockpro_expected
//	go get github.com/dgryski/go-clockpro@edc6d3e
//	go run . ../../traces > ../../traces/clockpro_expected.json
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	clockpro "github.com/dgryski/go-clockpro"
)

// blocks reads a `blocks` trace: one block number a line, skipping `*` markers, blank and
// comment lines.
func blocks(path string) []string {
	file, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	unzipped, err := gzip.NewReader(file)
	if err != nil {
		panic(err)
	}
	var ids []string
	lines := bufio.NewScanner(unzipped)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if line == "" || line == "*" || strings.HasPrefix(line, "#") {
			continue
		}
		ids = append(ids, line)
	}
	return ids
}

func main() {
	root := os.Args[1]
	counts := map[string]interface{}{
		"generator":   "scripts/clockpro_expected/main.go",
		"go-clockpro": "edc6d3e",
		"cache_sizes": []int{100, 500, 1000},
	}
	traces := map[string]map[string]int{}
	for _, name := range []string{"cs", "cpp", "gli", "ps", "multi1", "multi2"} {
		ids := blocks(filepath.Join(root, name+".trace.gz"))
		traces[name] = map[string]int{}
		for _, size := range []int{100, 500, 1000} {
			cache := clockpro.New(size)
			misses := 0
			for _, id := range ids {
				if cache.Get(id) == nil {
					misses++
					cache.Set(id, true)
				}
			}
			traces[name][strconv.Itoa(size)] = misses
		}
	}
	counts["traces"] = traces
	out, err := json.MarshalIndent(counts, "", " ")
	if err != nil {
		panic(err)
	}
	os.Stdout.Write(append(out, '\n'))
}
