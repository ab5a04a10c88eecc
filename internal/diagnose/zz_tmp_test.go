package diagnose

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

func TestZZView(t *testing.T) {
	files, _ := filepath.Glob(os.Getenv("ZZ"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var run model.Run
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range Test(&run, Options{}) {
			ids = append(ids, fmt.Sprintf("%s/%s", f.ID, f.Severity))
		}
		for _, v := range views(&run) {
			m := mathisBound(v, Options{})
			sh, _ := v.ofDelivery()
			fmt.Printf("%s\n  %-5s %s g=%v loss=%.4f%% ratio=%.2f ofDeliv=%.2f (%v floor %v peak %v) spread=%.2f rs=%.2f q=%d peakQ=%v srttQ=%v min=%v full=%v stood=%v segs=%.1f rto=%.2f(%d) dsack=%d/%d lim=%+v idle=%.2f fullS=%.2f over=%.2f win=%v bound=%v sndbuf=%v/%v\n  %v\n",
				filepath.Base(f), v.cc, v.dir, v.goodput, 100*v.loss, float64(v.goodput)/float64(m), sh, v.deliveryMax, v.deliveryFloor, v.deliveryPeak, v.rateSpread, v.retransSpread, v.quietTail, v.peakRTT-v.minRTT, v.srtt-v.minRTT, v.minRTT, pathFull(v), queueStood(v), queuedSegs(v), v.rtoShare(), v.rtos, v.dsack, v.retrans, v.limited, v.idleShare, v.fullShare, v.overrunShare, v.peerWindow, v.windowBound, v.sndBuf, v.sndBufMax, ids)
		}
	}
}

func TestZZVerdicts(t *testing.T) {
	files, _ := filepath.Glob(os.Getenv("ZZ"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var run model.Run
		if err := json.Unmarshal(b, &run); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range Test(&run, Options{}) {
			if f.Primary || f.Severity != model.Info {
				ids = append(ids, fmt.Sprintf("%s/%s", f.ID, f.Severity))
			}
		}
		fmt.Printf("%-100.100s %v\n", filepath.Base(f), ids)
	}
}
