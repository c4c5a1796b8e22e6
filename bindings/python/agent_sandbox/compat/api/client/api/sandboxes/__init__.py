"""E2B's ``sandboxes`` endpoints that agent-sandbox's ``e2b.api`` has.
SPDX-License-Identifier: Apache-2.0"""
