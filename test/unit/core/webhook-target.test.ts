import { describe, expect, it } from "vitest";
import { privateTargetReason } from "../../../src/core/closed-loop/webhook-target";

describe("privateTargetReason", () => {
  it("flags loopback, private, link-local and local-name targets in every spelling", () => {
    for (const url of [
      "http://127.0.0.1:9/x",
      "http://2130706433/",
      "http://0x7f.1/",
      "http://0.0.0.0/",
      "http://10.1.2.3/",
      "http://172.20.0.1/",
      "http://192.168.1.1/",
      "http://100.64.1.1/",
      "http://169.254.169.254/latest/meta-data",
      "http://[::1]/",
      "http://[::]/",
      "http://[::ffff:127.0.0.1]/",
      "http://[64:ff9b::10.0.0.1]/",
      "http://[fd00::1]/",
      "http://[fe80::1]/",
      "http://localhost:8787/",
      "http://api.localhost/",
      "http://printer.local/",
      "http://metadata.google.internal/",
      "http://vllm:8000/",
    ]) {
      expect(privateTargetReason(url), url).not.toBeNull();
    }
  });

  it("flags IPv6 forms that reach a private IPv4 address or a site: 6to4, Teredo, site-local", () => {
    for (const url of [
      "http://[2002:7f00:1::]/", // 6to4 of 127.0.0.1
      "http://[2002:a00:1::1]/", // 6to4 of 10.0.0.1
      "http://[2002:c0a8:101::]/", // 6to4 of 192.168.1.1
      "http://[2002:a9fe:a9fe::]/", // 6to4 of 169.254.169.254
      "http://[fec0::1]/",
      "http://[feff::1]/",
      "http://[2001::1]/", // Teredo
      "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
      "http://[64:ff9b:1::a00:1]/", // local-use NAT64
    ]) {
      expect(privateTargetReason(url), url).not.toBeNull();
    }
  });

  it("lets public addresses and names through", () => {
    for (const url of [
      "https://hooks.example/guard",
      "https://8.8.8.8/",
      "http://172.32.0.1/",
      "http://[2606:4700::1111]/",
      "http://[::ffff:8.8.8.8]/",
      "http://[2002:808:808::1]/", // 6to4 of 8.8.8.8
      "http://[2001:db9::1]/", // 2001:db9 is not Teredo's 2001:0
      "http://[2001:4860:4860::8888]/",
    ]) {
      expect(privateTargetReason(url), url).toBeNull();
    }
  });
});
