// Command floor is the scan benchmark's floor client (SPEC §10): a bare
// net/http program that makes a full scan's GETs, the plugin list, then
// each plugin's root and manifest, with 16 in flight, and only checks that
// each body is 200 OK and json.Valid. BenchmarkScanFloor builds it the way
// the release binary is built (static and stripped), so that the two start
// alike.
//
// Usage: floor BASE_URL PLUGINS AUTHORIZATION (plugins are p000, p001, ...)
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
)

const inFlight = 16

func main() {
	plugins, _ := strconv.Atoi(os.Args[2])
	if err := scan(os.Args[1], plugins, os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func scan(base string, plugins int, auth string) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = inFlight
	c := &http.Client{Transport: tr}
	slots := make(chan struct{}, inFlight)
	get := func(path string) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", auth)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && (resp.StatusCode != http.StatusOK || !json.Valid(body)) {
			err = fmt.Errorf("GET %s: HTTP %d, %d bytes", path, resp.StatusCode, len(body))
		}
		return err
	}
	if err := get("/api/plugins/"); err != nil {
		return err
	}
	errs := make([]error, plugins)
	var wg sync.WaitGroup
	for i := range plugins {
		wg.Go(func() {
			slug := fmt.Sprintf("p%03d", i)
			if errs[i] = get("/api/plugins/" + slug + "/"); errs[i] == nil {
				errs[i] = get("/api/plugins/" + slug + "/mcp/")
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
