package precision

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZDump(t *testing.T) {
	only := os.Getenv("ZZ_ONLY")
	if only == "" {
		t.Skip()
	}
	n := 0
	for _, s := range Impairments() {
		if !strings.Contains(s.Name, only) {
			continue
		}
		for i := 0; i < 4; i++ {
			cfg := s.Test
			cfg.Duration, cfg.Omit = testLength(s)
			run, err := inLab(t.Context(), s, cfg)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(run)
			n++
			os.WriteFile(fmt.Sprintf("/tmp/sbx/zz_%d.json", n), b, 0o644)
		}
	}
}
