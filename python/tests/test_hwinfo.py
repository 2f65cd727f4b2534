"""qforge.hwinfo(): the machine and the plugins as a dict."""

import json
import unittest

import qforge


class HwInfo(unittest.TestCase):
    def test_dict(self):
        info = qforge.hwinfo()
        json.dumps(info)  # plain data all the way down
        self.assertIn("x86_64" if info["cpu"]["architecture"] == "x86_64" else "",
                      info["cpu"]["architecture"])
        self.assertIsInstance(info["cpu"]["features"], dict)
        names = [p["name"] for p in info["plugins"]]
        self.assertIn("cpu_scalar", names)
        scalar = next(p for p in info["plugins"] if p["name"] == "cpu_scalar")
        self.assertTrue(scalar["usable"])
        self.assertEqual(scalar["devices"][0]["kind"], "cpu")
        self.assertIsInstance(info["plugin_failures"], list)
        self.assertTrue(info["plugin_search_path"])


if __name__ == "__main__":
    unittest.main()
