"""Mobile push notifications through Zulip's push notification bouncer.

``bouncer`` speaks the bouncer's remote-server protocol (``/api/v1/remotes/push/...``),
``payloads`` builds the APNs and FCM payloads Zulip's mobile apps understand, ``errors``
holds the errors the push endpoints raise.
"""
