// QR codes (Debian's libqrencode) for invitation links and app tokens shown in the console.
#include <qrencode.h>
