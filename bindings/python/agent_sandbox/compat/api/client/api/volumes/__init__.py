"""E2B's ``volumes`` endpoints (/volumes: create, list, get, delete) over
asb_volumes_*. SPDX-License-Identifier: Apache-2.0"""
