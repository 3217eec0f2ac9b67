// re2check compiles regular expressions with Go's regexp package (RE2 syntax, what Go's JSON Schema validators use
// for `pattern`) and reports, for each, the compile error or which of the given values it matches (unanchored, as
// JSON Schema's `pattern` matches). Input on stdin, output on stdout, both JSON:
//
//	in:  [{"pattern": "^a(b)$", "values": ["ab", "x"]}, ...]
//	out: [{"pattern": "^a(b)$", "error": "", "matches": [true, false]}, ...]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
)

type check struct {
	Pattern string   `json:"pattern"`
	Values  []string `json:"values"`
}

type verdict struct {
	Pattern string `json:"pattern"`
	Error   string `json:"error"`
	Matches []bool `json:"matches"`
}

func main() {
	var checks []check
	if err := json.NewDecoder(os.Stdin).Decode(&checks); err != nil {
		fmt.Fprintf(os.Stderr, "re2check: reading the JSON on stdin: %v\n", err)
		os.Exit(2)
	}
	verdicts := make([]verdict, 0, len(checks))
	for _, c := range checks {
		v := verdict{Pattern: c.Pattern, Matches: []bool{}}
		re, err := regexp.Compile(c.Pattern)
		if err != nil {
			v.Error = err.Error()
		} else {
			for _, value := range c.Values {
				v.Matches = append(v.Matches, re.MatchString(value))
			}
		}
		verdicts = append(verdicts, v)
	}
	if err := json.NewEncoder(os.Stdout).Encode(verdicts); err != nil {
		fmt.Fprintf(os.Stderr, "re2check: writing the answer: %v\n", err)
		os.Exit(1)
	}
}
