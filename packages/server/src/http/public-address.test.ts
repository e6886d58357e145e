import assert from "node:assert/strict";
import { test } from "node:test";
import { isPublicAddress } from "./public-address.js";

test("loopback, private, link-local, CGNAT, unique-local, metadata and their IPv6 spellings are not public", () => {
  for (const address of [
    "127.0.0.1",
    "127.255.0.9",
    "0.0.0.0",
    "10.0.0.1",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.0.1",
    "100.64.0.1",
    "100.127.255.255",
    "169.254.169.254",
    "192.0.0.192",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "0:0:0:0:0:ffff:a9fe:a9fe",
    "::ffff:10.1.2.3",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "64:ff9b::10.0.0.1",
    "2002:7f00:1::",
    "ff02::1",
    "not an address",
  ]) {
    assert.equal(isPublicAddress(address), false, address);
  }
});

test("public unicast addresses are public, also mapped into IPv6", () => {
  for (const address of [
    "8.8.8.8",
    "1.1.1.1",
    "100.128.0.1",
    "172.32.0.1",
    "::ffff:8.8.8.8",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "64:ff9b::808:808",
  ]) {
    assert.equal(isPublicAddress(address), true, address);
  }
});
