package scenario

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// PutInEtcd writes value at key through etcd's JSON gateway, behind the API
// server's back, as a lost encryption key or a bad write leaves an object
// it cannot decode.
func PutInEtcd(etcdURL, key, value string) error {
	return etcdCall(etcdURL+"/v3/kv/put", map[string]string{"key": b64(key), "value": b64(value)})
}

// DeleteInEtcd removes a key through etcd's JSON gateway, as etcdctl del
// does.
func DeleteInEtcd(etcdURL, key string) error {
	return etcdCall(etcdURL+"/v3/kv/deleterange", map[string]string{"key": b64(key)})
}

func etcdCall(url string, body map[string]string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s", url, resp.Status)
	}
	return nil
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
